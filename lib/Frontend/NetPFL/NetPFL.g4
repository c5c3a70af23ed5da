//===----------------------------------------------------------------------===//
// NetPFL.g4 - the NetPFL filter language (NetBee's nbpflcompiler, Globecom
// 2010 paper) as netvm accepts it (docs/netpfl.md).
//
// Boolean operators, loosest first: 'or', 'and', 'not'. An operand is a
// protocol ('tcp', 'ip%2'), a comparison ('ip.src == 10.1.1.1'), a string
// test ('payload.data contains "GET"'), or an encapsulation chain
// ('tcp in ip in ipv6', 'ip notin gre', '{ip, ipv6}* in any'). Arithmetic,
// loosest first: '&' '|' '^'; '<<' '>>'; '+' '-'; '*'; '~'. NetBee spelt
// '+' and '*' as '++' and '**' (its '+' and '*' are repeaters only); both
// spellings are accepted. An action may follow the filter.
//===----------------------------------------------------------------------===//

grammar NetPFL;

program : filter? filterAction* EOF ;

filter : orExpr ;

filterAction
  : (RETURNPACKET | RETPKT) ON PORT NUMBER     # returnPacket
  | EXTRACTFIELDS LPAREN fieldItem (COMMA fieldItem)* RPAREN  # extractFields
  ;

fieldItem : FIELD | MULTIFIELD ;

orExpr : andExpr ((OR | OROR) andExpr)* ;

andExpr : unaryExpr ((AND | ANDAND) unaryExpr)* ;

unaryExpr
  : (NOT | BANG) unaryExpr                     # notExpr
  | LPAREN orExpr RPAREN                       # parenExpr
  | operand TUNNELED? chainLink*               # chainExpr
  ;

// 'in X' or 'notin X', outer headers to the right.
chainLink : (IN | NOTIN) chainElement ;

chainElement
  : ANY repeater?                              # anyElement
  | protoSet repeater? TUNNELED?               # setElement
  ;

protoSet
  : operand                                    # singleProto
  | LBRACE operand (COMMA operand)* RBRACE     # braceSet
  ;

repeater : PLUS | STAR | QUESTION ;

operand
  : field (MATCHES | CONTAINS) STRING CASESENSITIVE?   # stringTest
  | arith relop arith                          # relation
  | (IDENT | PROTOINDEX)                       # protocol
  ;

relop : EQEQ | NE | LT | LE | GT | GE ;

arith
  : TILDE arith                                # bitNot
  | arith (STAR | STARSTAR) arith              # mul
  | arith (PLUS | PLUSPLUS | MINUS) arith      # add
  | arith (SHL | SHR) arith                    # shift
  | arith (AMP | PIPE | CARET) arith           # bitwise
  | LPAREN arith RPAREN                        # parenArith
  | (IDENT | PROTOINDEX) LBRACK NUMBER (COLON NUMBER)? RBRACK # slice
  | field                                      # fieldValue
  | NUMBER                                     # number
  | IPV4                                       # ipv4
  | COLONADDR                                  # colonAddress
  ;

field : FIELD ;

// Keywords.
AND : 'and' ;
OR : 'or' ;
NOT : 'not' ;
IN : 'in' ;
NOTIN : 'notin' ;
ANY : 'any' ;
TUNNELED : 'tunneled' ;
MATCHES : 'matches' ;
CONTAINS : 'contains' ;
CASESENSITIVE : 'casesensitive' ;
EXTRACTFIELDS : 'extractfields' ;
RETURNPACKET : 'returnpacket' ;
RETPKT : 'retpkt' ;
ON : 'on' ;
PORT : 'port' ;

ANDAND : '&&' ;
OROR : '||' ;
BANG : '!' ;
EQEQ : '==' ;
NE : '!=' ;
LE : '<=' ;
GE : '>=' ;
SHL : '<<' ;
SHR : '>>' ;
LT : '<' ;
GT : '>' ;
PLUSPLUS : '++' ;
STARSTAR : '**' ;
PLUS : '+' ;
MINUS : '-' ;
STAR : '*' ;
QUESTION : '?' ;
AMP : '&' ;
PIPE : '|' ;
CARET : '^' ;
TILDE : '~' ;
LPAREN : '(' ;
RPAREN : ')' ;
LBRACK : '[' ;
RBRACK : ']' ;
LBRACE : '{' ;
RBRACE : '}' ;
COMMA : ',' ;
COLON : ':' ;

fragment ID : [a-zA-Z_] [a-zA-Z0-9_]* ;
fragment HEX : [0-9a-fA-F] ;
fragment DEC : [0-9]+ ;

// 'ip.src', 'ip%2.src'; 'ip*.src' (every instance) is recognised to be
// refused with a clear message.
FIELD : ID ('%' DEC)? '.' ID ;
MULTIFIELD : ID '*' '.' ID ;
PROTOINDEX : ID '%' DEC ;
IPV4 : DEC '.' DEC '.' DEC '.' DEC ;
// MAC and IPv6 addresses: at least two colons (so that a slice 'ip[0:2]'
// stays three tokens); NetPFL.cpp tells them apart.
COLONADDR : HEX* ':' HEX* ':' [0-9a-fA-F:.]* ;
NUMBER : '0' [xX] HEX+ | DEC ;
STRING : '"' ( '\\' . | ~["\\\r\n] )* '"' ;
IDENT : ID ;

WS : [ \t\r\n]+ -> skip ;
ERROR_CHAR : . ;
